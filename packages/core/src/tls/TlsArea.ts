import { type Effect, Layer } from "effect"
import type { JobHandler } from "../jobs/Job.ts"
import type { Jobs } from "../jobs/Jobs.ts"
import type { HostnameStore } from "../hostnames/HostnameStore.ts"
import type { Sealer } from "../secrets/Sealer.ts"
import { area } from "../Area.ts"
import { AcmeClient } from "./AcmeClient.ts"
import { CertificateStore } from "./CertificateStore.ts"
import { TlsConfig } from "./TlsConfig.ts"
import { tlsIssueHandler, tlsSweepHandler } from "./TlsJobs.ts"

/** Decisions.md part 16: the edge's certificates, issued and renewed by ACME as durable jobs. */
export const TlsArea = area({
  name: "tls",
  ports: [TlsConfig.off, AcmeClient.off],
  stores: [CertificateStore],
  services: Layer.empty,
  jobs: [tlsSweepHandler, tlsIssueHandler] as ReadonlyArray<
    Effect.Effect<JobHandler, never, CertificateStore | HostnameStore | Sealer | Jobs | TlsConfig | AcmeClient>
  >
})
