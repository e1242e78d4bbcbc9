import { EndUser, Kernel } from "@hostplane/core"
import { Effect } from "effect"
import { addonAreaHttp } from "../addons/AddonAreaHttp.ts"
import { AuthAddonApi } from "@hostplane/api/enduser/EndUserApi"

const actor = Effect.service(Kernel.CurrentActor)

/** Spec 4.9: the auth add-on (status, grant, revoke) with its settings and providers in one group. */
export const EndUserAreaHttp = addonAreaHttp(EndUser.authAddon, {
  group: AuthAddonApi,
  handle: (handlers) =>
    Effect.map(Effect.service(EndUser.EndUserAuths), (auths) =>
      handlers
        .handle("settings", ({ params, payload }) =>
          Effect.flatMap(actor, (a) => auths.patch(a, params.orgSlug, params.projectName, payload))
        )
        .handle("putProvider", ({ params, payload }) =>
          Effect.flatMap(actor, (a) =>
            auths.putProvider(a, params.orgSlug, params.projectName, params.provider, payload)
          )
        )
        .handle("deleteProvider", ({ params }) =>
          Effect.flatMap(actor, (a) => auths.deleteProvider(a, params.orgSlug, params.projectName, params.provider))
        )
    ),
  routes: [
    "PATCH /v1/orgs/{orgSlug}/projects/{projectName}/auth",
    "PUT /v1/orgs/{orgSlug}/projects/{projectName}/auth/providers/{provider}",
    "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/auth/providers/{provider}"
  ]
})
