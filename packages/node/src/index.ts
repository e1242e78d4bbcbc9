export * from "./runtime/index.ts"
export * from "./edge/index.ts"
export * from "./enduser/index.ts"
export * from "./EdgeLive.ts"
