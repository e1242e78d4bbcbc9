import { BackupStoreMemory, DatabaseNodeMemory, databaseNodeSuite } from "@hostplane/testkit"
import { Layer } from "effect"

databaseNodeSuite("memory", Layer.mergeAll(DatabaseNodeMemory.layer, BackupStoreMemory.layer))
