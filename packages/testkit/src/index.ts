export * from "./identity/FakeIdentityProvider.ts"
export * from "./mail/FakeSmtpServer.ts"
