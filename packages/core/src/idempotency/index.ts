export * from "./Idempotency.ts"
export * from "./IdempotencyStore.ts"
export * from "./IdempotencyArea.ts"
