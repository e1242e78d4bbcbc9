export { parseListen } from "./Listen.ts"
export { ServerLive } from "./Server.ts"
