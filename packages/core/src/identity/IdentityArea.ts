import { area, areaSettings } from "../Area.ts"
import { IdentityConfig } from "./IdentityConfig.ts"
import { AuthCache } from "./AuthCache.ts"
import { Identity } from "./Identity.ts"
import { IdentityProvider } from "./IdentityProvider.ts"
import { UserStore } from "./UserStore.ts"

/** Spec 4.1: sign-in and sessions; a first sign-in makes a personal org through `Orgs`. */
export const IdentityArea = area({
  name: "identity",
  settings: areaSettings({ key: "identity", make: IdentityConfig.make, fromEnv: IdentityConfig.layerConfig }),
  ports: [IdentityProvider.off],
  stores: [UserStore, AuthCache],
  services: Identity.layer
})
