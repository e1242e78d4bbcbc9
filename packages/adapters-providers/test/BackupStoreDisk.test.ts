import { BackupStoreDisk } from "@hostplane/adapters-providers"
import { backupStoreSuite } from "@hostplane/testkit"

backupStoreSuite("local folder", BackupStoreDisk.layerTemp)
