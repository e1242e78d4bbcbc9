import { area, areaSettings } from "../Area.ts"
import { HostnamesConfig } from "./HostnamesConfig.ts"
import { hostnameCheckHandler } from "./HostnameCheck.ts"
import { hostnameTeardown, Hostnames } from "./Hostnames.ts"
import { HostnameStore } from "./HostnameStore.ts"

/** Spec 4.4: custom hostnames and their verification. */
export const HostnamesArea = area({
  name: "hostnames",
  settings: areaSettings({ key: "hostnames", make: HostnamesConfig.make, fromEnv: () => HostnamesConfig.layerConfig }),
  stores: [HostnameStore],
  services: Hostnames.layer,
  teardown: [hostnameTeardown],
  jobs: [hostnameCheckHandler]
})
