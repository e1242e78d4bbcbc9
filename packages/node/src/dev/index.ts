export * from "./DevServer.ts"
export * from "./FindWorkerd.ts"
export * from "./Folder.ts"
