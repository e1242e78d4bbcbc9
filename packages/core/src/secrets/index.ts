export * from "./Sealer.ts"
