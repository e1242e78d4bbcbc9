export * from "./Node.ts"
export * from "./NodeArea.ts"
export * from "./NodeConfig.ts"
export * from "./Nodes.ts"
