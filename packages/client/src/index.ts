export {
  type Client,
  ClientApi,
  type ClientOptions,
  errorInfo,
  type ErrorInfo,
  HostplaneClient,
  HostplaneError,
  make
} from "./HostplaneClient.ts"
export { makeClient, type PromiseClient } from "./PromiseClient.ts"
export { makeClientFor, makeFor, type PromiseClientOf } from "./ClientOf.ts"
