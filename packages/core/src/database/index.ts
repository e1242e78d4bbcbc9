export * from "./BackupStore.ts"
export * from "./DatabaseNode.ts"
