export { Api, apiId, apiOfGroups, apiPrefix, ApiWithDevAuth, groups } from "./Api.ts"
export { type AddonEndpoints, type AddonGroup, addonEndpoints, addonGroup, type AddonPath } from "./addons/AddonApi.ts"
export { Authentication } from "./auth/Authentication.ts"
export { apiError, apiErrors, Envelope } from "./errors/ApiError.ts"
