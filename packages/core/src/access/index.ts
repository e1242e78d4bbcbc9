export * from "./AccessRules.ts"
export * from "./PasswordHasher.ts"
