export * as AuthWorker from "./AuthWorker.ts"
export { authFlowCookie, authFlowTtl, authSessionCookie, callbackUrl } from "./AuthWorker.ts"
