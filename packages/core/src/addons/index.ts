export * from "./Addon.ts"
