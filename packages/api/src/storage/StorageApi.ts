import { Storage } from "@hostplane/core"
import { addonGroup } from "../addons/AddonApi.ts"

/** Spec 4.7's endpoints: status (viewer), grant (member), revoke (admin), on the add-on scaffold. */
export const StorageApi = addonGroup(Storage.storageAddon, {
  description: [
    "Spec 4.7: object storage under a per-project prefix derived from the project id (fixed forever, so a rename",
    "never moves objects). The quota is the org plan's; `usedBytes` is the node's last report (`POST /v1/node/usage`),",
    "so it lags. A revoke keeps the objects; a project delete removes them. No object listing or signed URL exists in",
    "this API: the node serves `env.storage`."
  ].join(" ")
})
