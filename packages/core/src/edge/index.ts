export * from "./AssetPath.ts"
export * from "./Edge.ts"
export * from "./EdgeSessionStore.ts"
export * from "./EdgeArea.ts"
