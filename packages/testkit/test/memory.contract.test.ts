import { contractSuites, layerMemory } from "@hostplane/testkit"

contractSuites("memory", layerMemory)
