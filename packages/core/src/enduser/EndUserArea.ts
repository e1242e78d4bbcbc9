import { Effect, Layer } from "effect"
import { EndUserDirectory, SocialOAuth } from "./EndUserPorts.ts"
import { area } from "../Area.ts"
import { nodeBinding } from "../node/NodeBinding.ts"
import { authAddonProvider } from "./AuthAddon.ts"
import { AuthStore } from "./AuthStore.ts"
import { AuthBinding } from "./EndUserAuth.ts"
import { EndUserAuths } from "./EndUserAuths.ts"
import { identitiesDeleteHandler } from "./IdentitiesDelete.ts"
import { SignInFlow } from "./SignInFlow.ts"

/**
 * Spec 4.9: end-user sign-in for a project's visitors. The add-on and its settings and providers live here; the users
 * and their sessions live in the project's own database, written by the sign-in flow (`SignInFlow`) that every edge's
 * auth worker runs; a provider delete removes that provider's identities there through a job.
 */
export const EndUserArea = area({
  name: "enduser",
  ports: [SocialOAuth.off, EndUserDirectory.off],
  stores: [AuthStore],
  services: SignInFlow.layer.pipe(Layer.provideMerge(EndUserAuths.layer)),
  addon: authAddonProvider,
  node: nodeBinding(
    "auth",
    AuthBinding,
    Effect.map(Effect.service(EndUserAuths), (auths) => auths.binding)
  ),
  jobs: [identitiesDeleteHandler]
})
