import { ArtifactStoreMemory, artifactStoreSuite, BackupStoreMemory, backupStoreSuite } from "@hostplane/testkit"

artifactStoreSuite("memory", ArtifactStoreMemory.layer)
backupStoreSuite("memory", BackupStoreMemory.layer)
