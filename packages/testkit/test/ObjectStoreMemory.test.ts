import { ObjectStoreMemory, objectStoreSuite } from "@hostplane/testkit"

objectStoreSuite("memory", ObjectStoreMemory.layer)
