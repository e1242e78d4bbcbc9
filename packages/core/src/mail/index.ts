export * from "./Mail.ts"
export * from "./SendMail.ts"
