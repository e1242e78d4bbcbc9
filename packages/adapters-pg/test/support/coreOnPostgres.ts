import { ArtifactStoreDisk, BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import {
  AccessStorePg,
  AuditLogPg,
  DeploymentStorePg,
  EdgeSessionStorePg,
  HostnameStorePg,
  MailOutboxPg,
  OperationStorePg,
  OrgStorePg,
  ProjectStorePg,
  SecretStorePg,
  TransactorPg,
  UserStorePg
} from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { services } from "@hostplane/core"
import { Settings } from "@hostplane/core/kernel/Settings"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import type { OrgStore } from "@hostplane/core/orgs/OrgStore"
import { Layer } from "effect"
import type { SqlClient } from "effect/sql"

/** Every core service on the PostgreSQL stores of a fresh test database; `orgStore` may wrap the real one. */
export const coreOnPostgres = (orgStore: Layer.Layer<OrgStore, never, SqlClient.SqlClient> = OrgStorePg.layer) =>
  services.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        orgStore,
        UserStorePg.layer,
        MailOutboxPg.layer,
        AuditLogPg.layer,
        TransactorPg.layer,
        ProjectStorePg.layer,
        OperationStorePg.layer,
        DeploymentStorePg.layer,
        SecretStorePg.layer,
        AccessStorePg.layer,
        SealerAesGcm.layerEphemeral,
        PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 }),
        HostnameStorePg.layer,
        EdgeSessionStorePg.layer,
        Settings.make(),
        dnsNone,
        BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))
      )
    ),
    Layer.provideMerge(TestDatabase.layer)
  )
