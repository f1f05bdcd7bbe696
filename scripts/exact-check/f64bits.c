// The exact f64 sum kernel's chunks by funnel shifts and signed adds (reduce.cu,
// exact_add_f64_normal) against exact.cuh's exact_magnitude with the sign, for 4 * 10^8 patterns:
// random bits, and every biased exponent with random mantissas and signs. gcc -O2 -o f64bits f64bits.c && ./f64bits
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
static uint32_t fsl(uint32_t lo, uint32_t hi, uint32_t sh){ sh&=31; uint64_t v=((uint64_t)hi<<32)|lo; return (uint32_t)((v<<sh)>>32); }
static uint64_t rng=88172645463325252ull; static uint64_t xr(void){rng^=rng<<13;rng^=rng>>7;rng^=rng<<17;return rng;}
int main(void){
  uint64_t bad=0,fast=0,n=0;
  for(uint64_t it=0;it<400000000ull;++it){
    uint64_t bits=xr();
    if(it%4==1){ bits=(bits&0x800fffffffffffffull)|((uint64_t)(it/4%2048)<<52);} // sweep exponents
    n++;
    uint32_t hi=bits>>32, lo=(uint32_t)bits;
    uint32_t biased=hi*2u-(1u<<21);
    uint32_t e=(bits>>52)&0x7ff;
    int isfast=biased<(2046u<<21);
    if(isfast!=(e>=1&&e<=2046)){bad++;continue;}
    if(!isfast)continue; fast++;
    // reference: exact_magnitude
    uint64_t m=(bits&0xfffffffffffffull)|(1ull<<52); uint32_t q=e-1, sh=q&31; uint64_t low=m<<sh;
    uint32_t rd=q>>5; int64_t rc[3]={(int64_t)(low&0xffffffffull),(int64_t)(low>>32),(int64_t)(sh?((m>>32)>>(32-sh)):0)};
    int neg=bits>>63; for(int k=0;k<3;k++) if(neg) rc[k]=-rc[k];
    // new
    uint32_t digit=biased>>26, qq=biased>>21, mhi=(hi&0xfffffu)|0x100000u;
    uint32_t c[3]={fsl(0,lo,qq),fsl(lo,mhi,qq),fsl(mhi,0,qq)};
    uint32_t s=(uint32_t)((int32_t)hi>>31);
    int ok=digit==rd;
    for(int k=0;k<3;k++){ int64_t a=(int64_t)((((uint64_t)s<<32)|(c[k]^s))+(uint64_t)(0u-s)); ok&=a==rc[k]; }
    if(!ok){ if(bad<5)printf("bad %016llx\n",(unsigned long long)bits); bad++; }
  }
  printf("n %llu fast %llu bad %llu\n",(unsigned long long)n,(unsigned long long)fast,(unsigned long long)bad);
  return bad!=0;
}
