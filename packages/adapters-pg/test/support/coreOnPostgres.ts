import { AuditLogPg, DeploymentStorePg, HostnameStorePg, MailOutboxPg, OperationStorePg, OrgStorePg, ProjectStorePg, TransactorPg, UserStorePg } from "@hostplane/adapters-pg"
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
        HostnameStorePg.layer,
        Settings.make(),
        dnsNone
      )
    ),
    Layer.provideMerge(TestDatabase.layer)
  )
