export { parseListen } from "./Listen.ts"
export { ServerLive } from "./Server.ts"
export { type HostplaneAdapters, type HostplaneDatabase, type HostplaneOptions, makeHostplane } from "./Hostplane.ts"
