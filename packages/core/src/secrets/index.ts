export * from "./Sealer.ts"
export * from "./Secret.ts"
export * from "./Secrets.ts"
export * from "./SecretStore.ts"
