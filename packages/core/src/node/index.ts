export * from "./Node.ts"
export * from "./NodeBinding.ts"
export * from "./NodeConfig.ts"
export * from "./Nodes.ts"
