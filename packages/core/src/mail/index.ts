export * from "./Mail.ts"
export * from "./SendMail.ts"
export * from "./MailConfig.ts"
export * from "./MailArea.ts"
