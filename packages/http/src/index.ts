export * from "./Api.ts"
export { app, appWith, type Ports, routerConfig, routerLayer, routes, routesOf } from "./App.ts"
export {
  type AddonAreaOptions,
  addonAreaHttp,
  addonEndpoints,
  type AddonEndpoints,
  type AddonGroup
} from "./addons/AddonAreaHttp.ts"
export { type AnyAreaHttp, apiId, apiPrefix, areaApi, type AreaHttp, areaHttp } from "./Area.ts"
export { areas } from "./areas.ts"
export { edgeApp } from "./edge/EdgeApp.ts"
export { apiError, apiErrors, Envelope } from "./errors/ApiError.ts"
export { makeNodeListener, type NodeListener } from "./server/NodeListener.ts"
