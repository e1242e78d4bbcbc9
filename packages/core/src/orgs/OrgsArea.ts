import { Layer } from "effect"
import { area, areaSettings } from "../Area.ts"
import { InvitesConfig } from "./InvitesConfig.ts"
import { Invites } from "./Invites.ts"
import { Members } from "./Members.ts"
import { Notifications } from "./Notifications.ts"
import { Orgs } from "./Orgs.ts"
import { OrgStore } from "./OrgStore.ts"

/** Spec 4.2: orgs, members, invites and notifications. */
export const OrgsArea = area({
  name: "orgs",
  settings: areaSettings({ key: "invites", make: InvitesConfig.make, fromEnv: () => InvitesConfig.layerConfig }),
  stores: [OrgStore],
  services: Layer.mergeAll(Members.layer, Invites.layer, Notifications.layer).pipe(Layer.provideMerge(Orgs.layer))
})
