export { layerMemory } from "./layerMemory.ts"
export { MemoryState } from "./MemoryState.ts"
export * as TransactorMemory from "./TransactorMemory.ts"
export { portsOff } from "./portsOff.ts"
