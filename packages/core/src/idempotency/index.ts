export * from "./Idempotency.ts"
export * from "./IdempotencyStore.ts"
