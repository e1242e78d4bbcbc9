import { areaHttp } from "../Area.ts"
import { DatabaseApi } from "@hostplane/api/database/DatabaseApi"
import { DatabaseHandlers } from "./DatabaseHandlers.ts"

const base = "/v1/orgs/{orgSlug}/projects/{projectName}/database"

export const DatabaseAreaHttp = areaHttp({
  name: "database",
  groups: [DatabaseApi],
  handlers: DatabaseHandlers,
  routes: [
    `GET ${base}`,
    `POST ${base}`,
    `GET ${base}/connect`,
    `GET ${base}/endpoint`,
    `GET ${base}/tokens`,
    `POST ${base}/tokens`,
    `DELETE ${base}/tokens/{tokenUser}`,
    `POST ${base}/export`,
    `GET ${base}/generations`,
    `POST ${base}/restore`,
    `POST ${base}/delete`,
    `GET ${base}/operations/{opId}`,
    `POST ${base}/operations/{opId}/abort`
  ]
})
