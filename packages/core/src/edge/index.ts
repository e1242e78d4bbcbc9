export * from "./EdgeSessionStore.ts"
export * from "./EdgeArea.ts"
export * from "./EdgePasses.ts"
