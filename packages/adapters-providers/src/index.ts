export * as IdentityProviderOAuth from "./identity/IdentityProviderOAuth.ts"
