import { Effect, Layer } from "effect"
import { SignInFlow } from "@hostplane/core/enduser/SignInFlow"
import { EdgeSignIn } from "../edge/Edge.ts"

export { authFlowCookie, authFlowTtl, authSessionCookie, callbackUrl } from "@hostplane/core/enduser/SignInFlow"

/**
 * The auth system worker on the control plane's own edge (spec 4.9): the sign-in flow in this process, on the
 * providers' client secrets and the project databases it holds (`SignInFlow`; a node on another machine asks the
 * same flow over the node API). Answers none where auth is not granted: the path goes on to the deployment.
 */
export const layer = Layer.effect(
  EdgeSignIn,
  Effect.map(Effect.service(SignInFlow), (flow) => EdgeSignIn.of({ handle: flow.handle }))
)
