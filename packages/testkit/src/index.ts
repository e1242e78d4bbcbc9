export * from "./identity/FakeIdentityProvider.ts"
