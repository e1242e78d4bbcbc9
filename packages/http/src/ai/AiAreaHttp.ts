import { Ai } from "@hostplane/core"
import { Layer } from "effect"
import { addonAreaHttp } from "../addons/AddonAreaHttp.ts"
import { areaHttp } from "../Area.ts"
import { AiAddonApi, AiCreditApi, AiGatewayApi } from "@hostplane/api/ai/AiApi"
import { AiGatewayHandlers } from "./AiGatewayHandlers.ts"
import { AiHandlers } from "./AiHandlers.ts"

export const AiAreaHttp = areaHttp({
  name: "aiCredit",
  groups: [AiCreditApi, AiGatewayApi],
  handlers: Layer.merge(AiHandlers, AiGatewayHandlers),
  routes: [
    "POST /v1/ai/chat/completions",
    "GET /v1/ai/models",
    "GET /v1/orgs/{orgSlug}/ai/credit",
    "GET /v1/orgs/{orgSlug}/ai/ledger",
    "POST /v1/orgs/{orgSlug}/ai/credit/checkout",
    "PUT /v1/orgs/{orgSlug}/ai/autotopup"
  ]
})

/** Spec 4.10's add-on endpoints: status (viewer), grant (member), revoke (admin), on the add-on scaffold. */
export const AiAddonAreaHttp = addonAreaHttp(Ai.aiAddon, { group: AiAddonApi })
