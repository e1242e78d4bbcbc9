export * from "./EdgeSessionStore.ts"
export * from "./EdgeArea.ts"
