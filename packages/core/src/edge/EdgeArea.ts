import { area } from "../Area.ts"
import { Edge } from "./Edge.ts"
import { EdgeSessionStore } from "./EdgeSessionStore.ts"

/** The reference edge's rules; they use the hostname and access services, so the edge comes after them. */
export const EdgeArea = area({ name: "edge", stores: [EdgeSessionStore], services: Edge.layer })
