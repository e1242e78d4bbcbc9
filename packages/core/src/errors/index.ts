export * from "./ErrorCode.ts"
export * from "./Errors.ts"
