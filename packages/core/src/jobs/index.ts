export * from "./Job.ts"
export * from "./JobRunner.ts"
export * from "./JobStore.ts"
export * from "./Jobs.ts"
