/// <reference types="vite/client" />
// import.meta.env.BASE_URL: '/console/' or '/admin/', whichever app the shared router and links are built into.
