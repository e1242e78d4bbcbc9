import { StorageApi } from "@hostplane/api/storage/StorageApi"
import { Storage } from "@hostplane/core"
import { addonAreaHttp } from "../addons/AddonAreaHttp.ts"

/** Spec 4.7's endpoints: status (viewer), grant (member), revoke (admin), on the add-on scaffold. */
export const StorageAreaHttp = addonAreaHttp(Storage.storageAddon, { group: StorageApi })
