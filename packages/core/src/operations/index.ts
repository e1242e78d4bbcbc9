export * from "./Operation.ts"
export * from "./OperationRunner.ts"
