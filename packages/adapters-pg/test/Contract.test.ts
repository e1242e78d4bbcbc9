import { mailOutboxSuite } from "@hostplane/testkit/contract/MailOutboxSuite"
import { orgStoreSuite } from "@hostplane/testkit/contract/OrgStoreSuite"
import { userStoreSuite } from "@hostplane/testkit/contract/UserStoreSuite"
import { Layer } from "effect"
import { layer as pgStores } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"

// Each suite builds its own fresh database from this layer.
const stores = pgStores.pipe(Layer.provide(TestDatabase.layer))

userStoreSuite("PostgreSQL", stores)
orgStoreSuite("PostgreSQL", stores)
mailOutboxSuite("PostgreSQL", stores)
