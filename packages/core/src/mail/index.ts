export * from "./Mail.ts"
export * from "./MailRunner.ts"
