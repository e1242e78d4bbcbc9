export * from "./Identity.ts"
export * from "./IdentityProvider.ts"
export * from "./User.ts"
export * from "./UserStore.ts"
