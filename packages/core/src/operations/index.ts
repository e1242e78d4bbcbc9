export * from "./Operation.ts"
