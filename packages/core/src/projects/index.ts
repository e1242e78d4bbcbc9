export * from "./Project.ts"
export * from "./ProjectHooks.ts"
export * from "./Projects.ts"
export * from "./ProjectStore.ts"
