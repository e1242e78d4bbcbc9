export * from "./Credit.ts"
export * from "./CreditStore.ts"
