import { areaPg } from "../Area.ts"
import createTlsCertificates from "./migrations/0001_create_tls_certificates.ts"
import * as CertificateStorePg from "./CertificateStorePg.ts"

export const TlsAreaPg = areaPg({
  name: "tls",
  stores: CertificateStorePg.layer,
  migrations: { "0001_create_tls_certificates": createTlsCertificates }
})
