import { ArtifactStoreDisk, BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import * as Pg from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { services } from "@hostplane/core"
import { configLayer } from "@hostplane/core/configs"
import { portsOff } from "@hostplane/testkit"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import type { EnvelopeStore } from "@hostplane/core/kernel/EnvelopeStore"
import type { OrgStore } from "@hostplane/core/orgs/OrgStore"
import { Layer } from "effect"
import type { SqlClient } from "effect/sql"

/** Every core service on the PostgreSQL stores of a fresh test database; `orgStore` and `envelope` may wrap the real ones. */
export const coreOnPostgres = (
  orgStore: Layer.Layer<OrgStore, never, SqlClient.SqlClient> = Pg.OrgStorePg.layer,
  envelope: Layer.Layer<EnvelopeStore, never, SqlClient.SqlClient> = Pg.EnvelopeStorePg.layer
) =>
  services.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        // The last layer of a merge wins for a service both provide: `orgStore` and `envelope` replace the stock ones.
        Pg.layer,
        orgStore,
        envelope,
        SealerAesGcm.layerEphemeral,
        PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 }),
        configLayer(),
        portsOff,
        dnsNone,
        BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))
      )
    ),
    Layer.provideMerge(TestDatabase.layer)
  )
