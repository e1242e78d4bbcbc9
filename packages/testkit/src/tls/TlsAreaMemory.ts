import { areaMemory } from "../Area.ts"
import * as CertificateStoreMemory from "./CertificateStoreMemory.ts"
import { certificateStoreSuite } from "./CertificateStoreSuite.ts"

export const TlsAreaMemory = areaMemory({
  name: "tls",
  stores: CertificateStoreMemory.layer,
  suites: [certificateStoreSuite]
})
