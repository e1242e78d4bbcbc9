export * from "./Api.ts"
export { app, appWith, type Ports, routerConfig, routerLayer, routes, routesOf, spanNames } from "./App.ts"
export { type AddonAreaOptions, addonAreaHttp } from "./addons/AddonAreaHttp.ts"
export { addonEndpoints, type AddonEndpoints, type AddonGroup } from "@hostplane/api/addons/AddonApi"
export { type AnyAreaHttp, apiId, apiPrefix, areaApi, type AreaHttp, areaHttp } from "./Area.ts"
export { areas } from "./areas.ts"
export { apiError, apiErrors, Envelope } from "@hostplane/api/errors/ApiError"
export { CoreWatch, RequestMetrics } from "./server/RequestPipeline.ts"
export { Draining } from "./server/Draining.ts"
export { makeMeLane, type MeLane } from "./identity/MeLane.ts"
export { makeNodeListener, type NodeListener } from "./server/NodeListener.ts"
export { Console, type ConsoleFile, type ConsoleFiles, consoleSecurityHeaders } from "./console/ConsolePages.ts"
export { mount, type Mounted, type NodeMiddleware, normalizePrefix, underPrefix } from "./server/Mount.ts"
export {
  HostActor,
  HostAuthenticator,
  HostAuthenticatorError,
  hostAuthenticatorCode,
  HostIdentity,
  type HostRequest
} from "./auth/HostAuthenticator.ts"
